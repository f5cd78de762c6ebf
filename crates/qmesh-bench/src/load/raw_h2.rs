//! A gRPC call written by hand over HTTP/2 on the daemon's Unix socket:
//! what a client that stops reading looks like to the daemon. No HTTP/2
//! library sits in between, so nothing reads on our behalf (tonic's
//! connection task would keep reading frames even while the call's
//! future is never polled).
//!
//! Two ways to stop reading:
//! * [`Stall::FlowControl`]: HTTP/2's default window (65,535 bytes); the
//!   daemon sends that much and then waits for a WINDOW_UPDATE that never
//!   comes. The rest of the reply stays in the daemon.
//! * [`Stall::Socket`]: the largest window, so the daemon writes until the
//!   socket's buffer is full; its connection then waits to write.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const MAX_WINDOW: u32 = (1 << 31) - 1;
const DEFAULT_WINDOW: u32 = 65_535;

/// How the client stops reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    FlowControl,
    Socket,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// HPACK's integer with a 7-bit prefix (a string's length, no Huffman).
fn hpack_len(out: &mut Vec<u8>, mut n: usize) {
    if n < 127 {
        out.push(n as u8);
        return;
    }
    out.push(127);
    n -= 127;
    while n >= 128 {
        out.push((n % 128 + 128) as u8);
        n /= 128;
    }
    out.push(n as u8);
}

/// A header as a literal without indexing, name and value spelled out.
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x00);
    hpack_len(out, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_len(out, value.len());
    out.extend_from_slice(value.as_bytes());
}

/// One frame: kind, flags, stream, payload.
fn read_frame(s: &mut UnixStream) -> io::Result<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head)?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload)?;
    Ok((head[3], head[4], stream, payload))
}

/// Opens a connection, sends one call to `path` (e.g.
/// `/qmesh.v1.Jobs/Status`) with the encoded `message`, and returns the
/// socket: the caller keeps it open and never reads it (or reads the reply
/// with [`reply_bytes`]).
pub fn call(socket: &Path, path: &str, message: &[u8], stall: Stall) -> io::Result<UnixStream> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut settings = Vec::new();
    if stall == Stall::Socket {
        settings.extend_from_slice(&SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes());
        settings.extend_from_slice(&MAX_WINDOW.to_be_bytes());
    }
    s.write_all(PREFACE)?;
    s.write_all(&frame(SETTINGS, 0, 0, &settings))?;
    if stall == Stall::Socket {
        let more = MAX_WINDOW - DEFAULT_WINDOW;
        s.write_all(&frame(WINDOW_UPDATE, 0, 0, &more.to_be_bytes()))?;
    }
    // The server's settings come first; acknowledge them.
    loop {
        let (kind, flags, _, _) = read_frame(&mut s)?;
        if kind == SETTINGS && flags & ACK == 0 {
            break;
        }
    }
    s.write_all(&frame(SETTINGS, ACK, 0, &[]))?;
    let mut headers = Vec::new();
    literal(&mut headers, ":method", "POST");
    literal(&mut headers, ":scheme", "http");
    literal(&mut headers, ":path", path);
    literal(&mut headers, ":authority", "localhost");
    literal(&mut headers, "content-type", "application/grpc");
    literal(&mut headers, "te", "trailers");
    s.write_all(&frame(HEADERS, END_HEADERS, 1, &headers))?;
    let mut body = Vec::with_capacity(5 + message.len());
    body.push(0); // not compressed
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(message);
    s.write_all(&frame(DATA, END_STREAM, 1, &body))?;
    Ok(s)
}

/// The same call, read to its end: the bytes of the reply's messages.
pub fn reply_bytes(socket: &Path, path: &str, message: &[u8]) -> io::Result<usize> {
    let mut s = call(socket, path, message, Stall::Socket)?;
    let mut total = 0;
    loop {
        let (kind, flags, stream, payload) = read_frame(&mut s)?;
        match kind {
            DATA if stream == 1 => {
                total += payload.len();
                if flags & END_STREAM != 0 {
                    return Ok(total);
                }
            }
            HEADERS if stream == 1 && flags & END_STREAM != 0 => return Ok(total),
            RST_STREAM | GOAWAY => {
                return Err(io::Error::other("the daemon reset the call"));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpack_lengths_use_a_seven_bit_prefix() {
        let mut out = Vec::new();
        hpack_len(&mut out, 10);
        hpack_len(&mut out, 127);
        hpack_len(&mut out, 1337);
        assert_eq!(out, [10, 127, 0, 127, 0xba, 0x09]);
    }

    #[test]
    fn a_frame_has_a_nine_byte_head() {
        let f = frame(HEADERS, END_HEADERS, 1, b"abc");
        assert_eq!(f, [0, 0, 3, 1, 4, 0, 0, 0, 1, b'a', b'b', b'c']);
    }
}
