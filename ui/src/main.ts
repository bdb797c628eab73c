import './app.css';
import { mount } from 'svelte';
import App from './App.svelte';
import { api } from './lib/api/client';
import { applyTheme, prefs } from './lib/prefs.svelte';
import { ConsoleStore } from './lib/stores/console.svelte';
import { Stream, browserDeps } from './lib/stream';

applyTheme(prefs.theme);

const store = new ConsoleStore({ fetchSlice: api.slice });
let deps = browserDeps(api.snapshot);

// Dev-only pretend engine. MODE is a build-time constant, so in a production
// build this branch and the fixtures chunk are not emitted at all.
if (import.meta.env.MODE === 'demo') {
  const demo = (await import('./dev/demo')).install();
  deps = { ...deps, open: demo.open };
}

const stream = new Stream(store, deps);
const target = document.getElementById('app');
if (target) {
  mount(App, { target, props: { store, stream } });
  stream.start();
}
