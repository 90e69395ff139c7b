//! The socket under a [`super::Connection`]: dialled on demand, one request written and its
//! reply read at a time, by the task that sends, with the buffers kept from one request to the
//! next.

use std::task::{Context, Waker};

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::{Reply, RequestError, response};
use crate::target::Target;

/// A keep-alive socket (or none yet) and its buffers.
#[derive(Debug, Default)]
pub struct Socket {
    stream: Option<TcpStream>,
    /// The request being sent, head and body; reused.
    pub outgoing: Vec<u8>,
    /// Bytes read and not yet consumed; reused.
    incoming: BytesMut,
}

impl Socket {
    /// Whether a socket is open.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Dials `target`, replacing any socket.
    pub async fn dial(&mut self, target: &Target) -> Result<(), RequestError> {
        self.close();
        self.stream = Some(dial(target).await?);
        Ok(())
    }

    /// Writes `outgoing` (dialling first if no socket is open) and reads the reply; closes
    /// the socket after a reply that ends the connection. A caller that drops this before it
    /// ends must [`Socket::close`].
    pub async fn exchange(&mut self, target: &Target) -> Result<Reply, RequestError> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => self.stream.insert(dial(target).await?),
        };
        stream
            .write_all(&self.outgoing)
            .await
            .map_err(|_| RequestError::Transport)?;
        let read = response::read_reply(stream, &mut self.incoming).await?;
        if !read.keep_alive {
            self.close();
        }
        Ok(read.reply)
    }

    /// Drops the socket and whatever was read from it.
    pub fn close(&mut self) {
        self.stream = None;
        self.incoming.clear();
    }

    /// Drops a kept-alive socket the server has since closed (an idle timeout) or written to
    /// unasked, so the next request dials instead of failing. Tokio already knows from its
    /// last poll whether the socket turned readable, so a live idle socket costs no syscall.
    pub fn drop_if_closed_by_server(&mut self) {
        let Some(stream) = &self.stream else {
            return;
        };
        let mut context = Context::from_waker(Waker::noop());
        if stream.poll_read_ready(&mut context).is_pending() {
            return;
        }
        let mut probe = [0u8; 1];
        let idle = matches!(
            stream.try_read(&mut probe),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock
        );
        if !idle {
            self.close();
        }
    }
}

async fn dial(target: &Target) -> Result<TcpStream, RequestError> {
    let stream = TcpStream::connect(target.address())
        .await
        .map_err(|_| RequestError::Connect)?;
    stream
        .set_nodelay(true)
        .map_err(|_| RequestError::Connect)?;
    Ok(stream)
}
