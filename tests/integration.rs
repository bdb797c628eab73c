mod path_escape;
