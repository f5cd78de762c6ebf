//! The framing on the bridge's socket, both ways: 1 byte kind, 4 bytes
//! big-endian payload length, the payload. Shared with the agent's side.

/// Terminal bytes: to the bridge, input for the terminal; from it, the
/// terminal's output.
pub const DATA: u8 = 1;
/// To the bridge: the window size, rows then columns, each a u16 BE.
pub const WINDOW: u8 = 2;
/// From the bridge, last: the shell's exit status, an i32 BE (its exit
/// code, or 128 + the signal that killed it).
pub const EXIT: u8 = 3;
/// To the bridge: a signal number, an i32 BE, for the terminal's
/// foreground process group (^C without a terminal on the client side).
pub const SIGNAL: u8 = 4;

/// Kind and length.
pub const HEADER_LEN: usize = 5;
/// The largest payload either side accepts; a longer frame is a protocol
/// error and ends the connection.
pub const MAX_PAYLOAD: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The stream cannot be resynchronised after this: close it.
    #[error(
        "a frame announces {len} bytes of payload, over the limit of {MAX_PAYLOAD}; \
         the peer is broken or speaks another protocol, so the connection is closed"
    )]
    TooLong { len: usize },
}

/// One frame. `payload` must not exceed [`MAX_PAYLOAD`]: split longer
/// data into several DATA frames.
pub fn encode(kind: u8, payload: &[u8]) -> Vec<u8> {
    debug_assert!(
        payload.len() <= MAX_PAYLOAD,
        "frame payload over MAX_PAYLOAD"
    );
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.push(kind);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A WINDOW frame.
pub fn window(rows: u16, cols: u16) -> Vec<u8> {
    let [r0, r1] = rows.to_be_bytes();
    let [c0, c1] = cols.to_be_bytes();
    encode(WINDOW, &[r0, r1, c0, c1])
}

/// A SIGNAL frame.
pub fn signal(signo: i32) -> Vec<u8> {
    encode(SIGNAL, &signo.to_be_bytes())
}

/// An EXIT frame.
pub fn exit(status: i32) -> Vec<u8> {
    encode(EXIT, &status.to_be_bytes())
}

/// The rows and columns of a WINDOW payload; `None` if it is not 4 bytes.
pub fn parse_window(payload: &[u8]) -> Option<(u16, u16)> {
    match *payload {
        [r0, r1, c0, c1] => Some((u16::from_be_bytes([r0, r1]), u16::from_be_bytes([c0, c1]))),
        _ => None,
    }
}

/// The number in an EXIT or SIGNAL payload; `None` if it is not 4 bytes.
pub fn parse_i32(payload: &[u8]) -> Option<i32> {
    <[u8; 4]>::try_from(payload).ok().map(i32::from_be_bytes)
}

/// Cuts a byte stream into frames: [`push`](Self::push) what arrives,
/// then call [`next`](Self::next) until it gives `Ok(None)`.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Where the first frame not yet returned starts in `buf`.
    start: usize,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame as (kind, payload), or `None` until more
    /// bytes are pushed. After an error the stream is lost: close it.
    #[allow(
        clippy::should_implement_trait,
        reason = "a fallible next, not an iterator"
    )]
    pub fn next(&mut self) -> Result<Option<(u8, Vec<u8>)>, FrameError> {
        let rest = &self.buf[self.start..];
        let Some(&[kind, l0, l1, l2, l3]) = rest.get(..HEADER_LEN) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([l0, l1, l2, l3]) as usize;
        if len > MAX_PAYLOAD {
            return Err(FrameError::TooLong { len });
        }
        let Some(payload) = rest.get(HEADER_LEN..HEADER_LEN + len) else {
            return Ok(None);
        };
        let frame = (kind, payload.to_vec());
        self.start += HEADER_LEN + len;
        Ok(Some(frame))
    }

    /// Bytes pushed and not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }
}
