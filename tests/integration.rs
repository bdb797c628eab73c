mod ssrf;
