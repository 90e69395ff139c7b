//! The write timeout of a connection: [`WriteTimeout`] wraps a socket and fails a write (or
//! flush) that has made no progress for `write_timeout_ms`. Hyper then closes the connection
//! and drops the response it was writing, which returns the answer's memory to the budget
//! ([`crate::limits::memory`]) and its permits; the messages it carried are redelivered when their
//! leases end, as for any consumer that vanished.
//!
//! Hyper has no write timeout of its own, and a client that sends a request and never reads
//! (the QMQ incident in `shared/seeds/`) would otherwise hold its answer for as long as the
//! socket stays open.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A socket whose writes fail with [`io::ErrorKind::TimedOut`] after `limit` without
/// progress. Reads are untouched (the header and body read timeouts cover them).
#[derive(Debug)]
pub(crate) struct WriteTimeout<T> {
    inner: T,
    limit: Duration,
    /// Armed while a write waits; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    /// `inner` with writes cut off after `limit` without progress.
    pub(crate) fn new(inner: T, limit: Duration) -> Self {
        WriteTimeout {
            inner,
            limit,
            stalled: None,
        }
    }

    /// The socket, unwrapped (an upgraded connection that times its writes itself).
    pub(crate) fn into_inner(self) -> T {
        self.inner
    }

    /// Passes on what a write (or flush, or shutdown) of the socket gave: progress clears the
    /// timer, a wait arms it (or fails once it has fired).
    fn timed<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match polled {
            Poll::Pending => self.waiting(cx).map(Err),
            done => {
                self.stalled = None;
                done
            }
        }
    }

    /// What a pending write does: arm the timer on the first wait, fail once it fires.
    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        ready!(timer.as_mut().poll(cx));
        self.stalled = None;
        crate::governance::metrics::write_timed_out();
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client read nothing for {} ms; closing",
                limit.as_millis()
            ),
        ))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.timed(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.timed(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.timed(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.timed(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_does_not_read_fails_after_the_limit() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut socket = WriteTimeout::new(near, Duration::from_secs(10));
        let started = Instant::now();
        let error = socket
            .write_all(&[7u8; 64 * 1024])
            .await
            .expect_err("nobody reads");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(10));
        let mut first = [0u8; 1024];
        far.read_exact(&mut first)
            .await
            .expect("what fit was written");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_never_cut_off() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut socket = WriteTimeout::new(near, Duration::from_secs(10));
        let reader = tokio::spawn(async move {
            let mut got = 0;
            let mut chunk = [0u8; 1024];
            while got < 64 * 1024 {
                tokio::time::sleep(Duration::from_secs(5)).await;
                got += far.read(&mut chunk).await.expect("read");
            }
            got
        });
        socket
            .write_all(&[7u8; 64 * 1024])
            .await
            .expect("each write progresses within the limit");
        assert_eq!(reader.await.expect("reader"), 64 * 1024);
    }
}
