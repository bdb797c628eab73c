//! A real Postgres for a test: Debian's `postgresql` binaries, a cluster
//! made by `initdb` in a temp dir, listening on a private port and socket
//! dir, with no system service involved. Each test gets its own cluster
//! (about a second to make), so a test may kill it and start it again.
//!
//! `initdb` refuses to run as root; as root the cluster is made and run as
//! the `postgres` user (through `setpriv`), in a dir that user owns.
//! Missing binaries fail the test with what to install: a test never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

const INSTALL: &str = "install Debian's `postgresql` package (the tests start their own cluster)";

/// One running cluster; stopped (immediately) when dropped.
pub(crate) struct Postgres {
    dir: TempDir,
    bin: PathBuf,
    port: u16,
    /// `postgres`'s uid and gid when the tests run as root.
    run_as: Option<(u32, u32)>,
    /// Server options beyond the port and socket dir (TLS).
    extra: String,
}

impl Postgres {
    /// Makes and starts a fresh cluster.
    pub(crate) fn start() -> Self {
        let pg = Self::made();
        pg.start_again();
        pg
    }

    /// Makes and starts a fresh cluster that also speaks TLS, with a
    /// certificate for `localhost` and `127.0.0.1` from a CA of its own
    /// ([`Self::ca`]), made with the `openssl` command.
    pub(crate) fn start_tls() -> Self {
        let mut pg = Self::made();
        let tls = pg.dir.path().join("tls");
        std::fs::create_dir(&tls).unwrap();
        let sh = r#"set -e
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=toolgate test CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext 2>/dev/null
chmod 600 server.key
"#;
        let out = Command::new("sh")
            .args(["-c", sh])
            .current_dir(&tls)
            .output()
            .unwrap_or_else(|e| panic!("cannot run openssl through sh: {e}"));
        assert!(
            out.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some((uid, gid)) = pg.run_as {
            for f in ["server.key", "server.pem"] {
                std::os::unix::fs::chown(tls.join(f), Some(uid), Some(gid)).unwrap();
            }
            std::os::unix::fs::chown(&tls, Some(uid), Some(gid)).unwrap();
        }
        pg.extra = format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            tls.join("server.pem").display(),
            tls.join("server.key").display()
        );
        pg.start_again();
        pg
    }

    /// The CA that signed a TLS cluster's certificate (PEM).
    pub(crate) fn ca(&self) -> PathBuf {
        self.dir.path().join("tls/ca.pem")
    }

    /// A cluster made by `initdb`, not started.
    fn made() -> Self {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("toolgate-pg-")
            .tempdir()
            .expect("temp dir");
        let run_as = (rustix::process::geteuid().is_root()).then(postgres_ids);
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown the pg dir");
        }
        let pg = Self {
            dir,
            bin,
            port: free_port(),
            run_as,
            extra: String::new(),
        };
        pg.run(
            "initdb",
            &[
                "-D".as_ref(),
                pg.data().as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "--auth=trust".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        pg
    }

    /// Starts the cluster after [`Self::kill`], on the same port.
    pub(crate) fn start_again(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off{}",
            self.port,
            self.dir.path().display(),
            self.extra
        );
        let log = self.dir.path().join("log");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                self.data().as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        );
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m
    /// immediate`: no checkpoint, clients cut off).
    pub(crate) fn kill(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                self.data().as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
    }

    /// The URL of database `postgres` as the superuser.
    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `tool` from the server's bin dir, as the user the cluster runs as.
    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        let mut cmd = match self.run_as {
            Some((uid, gid)) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg(&program);
                c
            }
            None => Command::new(&program),
        };
        cmd.current_dir(self.dir.path());
        cmd
    }

    fn run(&self, tool: &str, args: &[&std::ffi::OsStr]) {
        let out = self
            .command(tool)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {tool}: {e}; {INSTALL}"));
        assert!(
            out.status.success(),
            "{tool} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.data().join("postmaster.pid").exists() {
            let _ = self
                .command("pg_ctl")
                .args(["-m", "immediate", "-w", "stop", "-D"])
                .arg(self.data())
                .output();
        }
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> PathBuf {
    let base = Path::new("/usr/lib/postgresql");
    let newest = std::fs::read_dir(base)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").exists())
        .max_by_key(|(v, _)| *v);
    match newest {
        Some((_, bin)) => bin,
        None => panic!(
            "no Postgres server binaries under {}: {INSTALL}",
            base.display()
        ),
    }
}

/// The `postgres` user's uid and gid, from `/etc/passwd`.
fn postgres_ids() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd");
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres"))
                .then(|| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))
                .flatten()
        })
        .unwrap_or_else(|| {
            panic!("no `postgres` user to run Postgres as (tests run as root): {INSTALL}")
        })
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}
