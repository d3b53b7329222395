//! A real etcd server for tests (Debian's `etcd-server`, which
//! scripts/test.sh installs): one member on free loopback ports, in a
//! temporary directory, killed when dropped.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct EtcdServer {
    child: Child,
    pub client_port: u16,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl EtcdServer {
    pub fn start() -> EtcdServer {
        let bin = std::env::var("STRATA_ETCD_BIN").unwrap_or_else(|_| "etcd".to_string());
        let dir = tempfile::tempdir().expect("temp dir");
        let (client_port, peer_port) = (free_port(), free_port());
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let child = Command::new(&bin)
            .args(["--name", "t", "--data-dir"])
            .arg(dir.path())
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("t={peer}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start `{bin}` ({e}): install Debian's etcd-server (scripts/test.sh does) or set STRATA_ETCD_BIN")
            });
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let up = std::net::TcpStream::connect(("127.0.0.1", client_port)).is_ok();
            if up {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "etcd did not start on port {client_port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        EtcdServer {
            child,
            client_port,
            _dir: dir,
        }
    }

    /// `etcd://127.0.0.1:PORT/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("etcd://127.0.0.1:{}/{prefix}", self.client_port)
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
