//! `toolgate-desktop`: see the library.

fn main() {
    // Governed processes of the in-process engine run under this binary as
    // their warden (toolgate::barrier): that must happen before any thread.
    toolgate::barrier::warden::run_if_asked();
    toolgate_desktop::run();
}
