//! `toolgate-desktop`: see the library.

fn main() {
    toolgate_desktop::run();
}
