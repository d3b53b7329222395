//! A TCP proxy that delays every request by a fixed time:
//! `strata-delay-proxy LISTEN UPSTREAM DELAY_MS`. A "request" is the first
//! bytes a client sends after the server has answered (HTTP/1.1 keeps one
//! request in flight per connection), so a large upload is delayed once,
//! not per packet. Responses pass through untouched.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        anyhow::bail!("usage: strata-delay-proxy LISTEN_ADDR UPSTREAM_ADDR DELAY_MS");
    }
    let listener = TcpListener::bind(&args[1]).await?;
    let upstream = args[2].clone();
    let delay = Duration::from_millis(args[3].parse()?);
    eprintln!(
        "delaying requests to {upstream} by {delay:?} on {}",
        listener.local_addr()?
    );
    loop {
        let (client, _) = listener.accept().await?;
        let upstream = upstream.clone();
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(&upstream).await {
                let _ = proxy(client, server, delay).await;
            }
        });
    }
}

async fn proxy(client: TcpStream, server: TcpStream, delay: Duration) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // Set when the server has sent bytes since the client last did.
    let answered = Arc::new(AtomicBool::new(true));
    let a = answered.clone();
    let up = tokio::spawn(async move {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = cr.read(&mut buf).await?;
            if n == 0 {
                sw.shutdown().await?;
                return Ok::<_, std::io::Error>(());
            }
            if a.swap(false, Ordering::AcqRel) {
                tokio::time::sleep(delay).await;
            }
            sw.write_all(&buf[..n]).await?;
        }
    });
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = sr.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        answered.store(true, Ordering::Release);
        cw.write_all(&buf[..n]).await?;
    }
    let _ = cw.shutdown().await;
    up.abort();
    Ok(())
}
