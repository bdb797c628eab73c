//! Telling a peer that hung up from one that only closed its writing side.
//!
//! A read returns end-of-file in both cases, but they mean different things
//! to the agent socket: `toolgate mcp-bridge` shuts its write side when its
//! client's stdin ends and still wants the replies, while a peer that
//! closed (or died) wants nothing more, and its calls must be cancelled
//! (its pending approvals closed) at once. The kernel tells them apart: a
//! stream socket whose peer is gone for good polls as `EPOLLHUP`, which
//! tokio reports as write-closed; a half-close only as read-closed.
//!
//! The watch registers a duplicate of the socket with the reactor as a
//! stream of its own, only ever waited on for writability, so clearing its
//! readiness never disturbs the readiness the connection's own reads and
//! writes depend on. Hand-written because tokio has no "wait for hang-up"
//! on a stream that is read and written elsewhere; it needs no `unsafe`
//! (the duplicate is an `OwnedFd` turned into a socket).

use std::future::Future;
use std::io;
use std::os::fd::AsFd;

use tokio::io::Interest;
use tokio::net::UnixStream;

/// A future that resolves once the peer of `stream` is gone for good. It
/// holds a duplicate of the socket: drop it with the connection, or the
/// peer will not see the socket close.
///
/// # Errors
/// The socket could not be duplicated or registered with the reactor (no
/// tokio runtime, descriptor limit reached).
pub fn hangup(stream: &UnixStream) -> io::Result<impl Future<Output = ()> + Send + 'static> {
    let fd = stream.as_fd().try_clone_to_owned()?;
    let watched = UnixStream::from_std(std::os::unix::net::UnixStream::from(fd))?;
    Ok(async move {
        loop {
            let Ok(ready) = watched.ready(Interest::WRITABLE).await else {
                // The reactor is gone (runtime shutting down): nobody is
                // left to tell.
                return std::future::pending().await;
            };
            if ready.is_write_closed() {
                return;
            }
            // Plain writability: clear it (closed states are sticky in
            // tokio), so the next wake-up is the next edge.
            let _ = watched.try_io(Interest::WRITABLE, || {
                Err::<(), _>(io::ErrorKind::WouldBlock.into())
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixStream;

    use super::*;

    /// How long a hang-up that happened may take to be seen: generous,
    /// since it is a deadline for a failure, not a measurement.
    const SEEN: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_peer_that_closes_is_seen_at_once() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let gone = hangup(&ours).unwrap();
        drop(theirs);
        tokio::time::timeout(SEEN, gone)
            .await
            .expect("the hang-up is seen");
    }

    #[tokio::test]
    async fn a_half_close_is_not_a_hang_up_but_the_full_close_after_it_is() {
        let (mut ours, mut theirs) = UnixStream::pair().unwrap();
        let mut gone = Box::pin(hangup(&ours).unwrap());
        theirs.shutdown().await.unwrap();
        // The half-close wakes nothing that resolves: the watch is still
        // pending after the reactor has seen the peer's shutdown (a read
        // on our side returns EOF by then).
        let mut buf = [0u8; 1];
        assert_eq!(ours.read(&mut buf).await.unwrap(), 0);
        tokio::task::yield_now().await;
        assert!(
            futures::poll!(gone.as_mut()).is_pending(),
            "a half-closed peer still takes replies"
        );
        drop(theirs);
        tokio::time::timeout(SEEN, gone)
            .await
            .expect("the full close is seen");
    }

    #[tokio::test]
    async fn writing_on_the_connection_does_not_end_the_watch() {
        let (mut ours, theirs) = UnixStream::pair().unwrap();
        let mut gone = Box::pin(hangup(&ours).unwrap());
        for _ in 0..100 {
            ours.write_all(b"reply\n").await.unwrap();
        }
        tokio::task::yield_now().await;
        assert!(futures::poll!(gone.as_mut()).is_pending());
        drop(theirs);
        tokio::time::timeout(SEEN, gone)
            .await
            .expect("the hang-up is seen");
    }
}
