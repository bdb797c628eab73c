//! `fs_read`, `fs_write`, `fs_list`. (Stub.)
