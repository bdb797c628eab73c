// Shows the shell's status. The shell navigates here with
// `#status=<text>&detail=<text>&settled=1`; the text is set with
// textContent, never as HTML.
'use strict';
function show() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  const status = params.get('status');
  if (status) document.getElementById('status').textContent = status;
  document.getElementById('detail').textContent = params.get('detail') || '';
  document.body.classList.toggle('settled', params.get('settled') === '1');
}
window.addEventListener('hashchange', show);
show();
