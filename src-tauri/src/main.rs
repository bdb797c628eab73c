//! `toolgate-desktop`: see the library.

fn main() {
    // Governed processes of the in-process engine run under this binary as
    // their warden (toolgate::barrier): that must happen before any thread.
    toolgate::barrier::warden::run_if_asked();
    if let Some(text) = toolgate_desktop::args::answer(std::env::args().skip(1)) {
        println!("{text}");
        return;
    }
    toolgate_desktop::run();
}
