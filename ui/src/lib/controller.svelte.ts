/**
 * Where keyboard actions go: the view on screen registers its handlers; the
 * shell handles the global ones (help, go to, jump, search).
 */
import type { Action } from './keymap';

export type ViewHandler = (a: Action) => boolean;

class Controller {
  private handler: ViewHandler | null = null;
  /** Open modal dialogs (keys other than Ctrl+Shift+J wait while > 0). */
  dialogs = $state(0);
  /** A request to jump to the soonest approval, picked up by the Approvals view. */
  jumpTick = $state(0);

  register(h: ViewHandler): () => void {
    this.handler = h;
    return () => {
      if (this.handler === h) this.handler = null;
    };
  }

  dispatch(a: Action): boolean {
    return this.handler ? this.handler(a) : false;
  }
}

export const controller = new Controller();
