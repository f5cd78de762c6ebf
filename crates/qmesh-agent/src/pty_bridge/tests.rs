use super::frame::{Decoder, FrameError};
use super::*;
use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

#[test]
fn a_frame_split_anywhere_decodes_whole() {
    let bytes = frame::encode(frame::DATA, b"hello");
    for cut in 0..=bytes.len() {
        let mut d = Decoder::new();
        d.push(&bytes[..cut]);
        if cut < bytes.len() {
            assert_eq!(d.next(), Ok(None), "cut at {cut}");
        }
        d.push(&bytes[cut..]);
        assert_eq!(d.next(), Ok(Some((frame::DATA, b"hello".to_vec()))));
        assert_eq!(d.next(), Ok(None));
        assert_eq!(d.buffered(), 0);
    }
}

#[test]
fn two_frames_in_one_push_come_out_in_order() {
    let mut bytes = frame::window(40, 100);
    bytes.extend(frame::encode(frame::DATA, b""));
    bytes.extend(&frame::exit(-1)[..3]);
    let mut d = Decoder::new();
    d.push(&bytes);
    let (kind, payload) = d.next().unwrap().unwrap();
    assert_eq!(
        (kind, frame::parse_window(&payload)),
        (frame::WINDOW, Some((40, 100)))
    );
    assert_eq!(d.next(), Ok(Some((frame::DATA, Vec::new()))));
    assert_eq!(d.next(), Ok(None));
    d.push(&frame::exit(-1)[3..]);
    let (kind, payload) = d.next().unwrap().unwrap();
    assert_eq!((kind, frame::parse_i32(&payload)), (frame::EXIT, Some(-1)));
}

#[test]
fn a_frame_over_the_limit_is_an_error() {
    let mut d = Decoder::new();
    d.push(&[frame::DATA]);
    d.push(&((frame::MAX_PAYLOAD + 1) as u32).to_be_bytes());
    assert_eq!(
        d.next(),
        Err(FrameError::TooLong {
            len: frame::MAX_PAYLOAD + 1
        })
    );
    let mut at_limit = Decoder::new();
    at_limit.push(&frame::encode(frame::DATA, &vec![7; frame::MAX_PAYLOAD]));
    assert!(matches!(at_limit.next(), Ok(Some((frame::DATA, p))) if p.len() == frame::MAX_PAYLOAD));
}

#[test]
fn payload_helpers_reject_wrong_sizes() {
    assert_eq!(frame::parse_window(&[0, 1, 2]), None);
    assert_eq!(frame::parse_i32(&[0, 0, 0, 9, 0]), None);
    assert_eq!(
        frame::parse_i32(&frame::signal(2)[frame::HEADER_LEN..]),
        Some(2)
    );
}

#[test]
fn only_root_and_the_agent_may_attach() {
    assert!(may_attach(0, 500));
    assert!(may_attach(500, 500));
    assert!(!may_attach(501, 500));
}

#[test]
fn exit_statuses_are_a_shells() {
    let pid = Pid::from_raw(1);
    assert_eq!(exit_status(WaitStatus::Exited(pid, 3)), Some(3));
    assert_eq!(
        exit_status(WaitStatus::Signaled(pid, Signal::SIGKILL, false)),
        Some(137)
    );
    assert_eq!(exit_status(WaitStatus::StillAlive), None);
}

#[test]
fn detached_output_keeps_the_newest_bytes() {
    let mut kept = VecDeque::new();
    keep_recent(&mut kept, b"abcdef", 4);
    assert_eq!(kept.iter().copied().collect::<Vec<_>>(), b"cdef");
    keep_recent(&mut kept, b"gh", 4);
    assert_eq!(kept.iter().copied().collect::<Vec<_>>(), b"efgh");
    keep_recent(&mut kept, b"i", 4);
    assert_eq!(kept.iter().copied().collect::<Vec<_>>(), b"fghi");
}

#[test]
fn a_login_shell_is_named_with_a_dash() {
    assert_eq!(login_name(Path::new("/bin/bash")), "-bash");
    assert_eq!(login_name(Path::new("zsh")), "-zsh");
}

#[test]
fn a_taken_name_is_refused_before_any_shell() {
    let name = unique_name();
    let _first = listen_abstract(&name).expect("listen");
    let second = listen_abstract(&name).err().map(|e| e.to_string());
    assert!(second.is_some_and(|e| e.contains("already bound")));
    assert!(matches!(
        listen_abstract(""),
        Err(StartError::BadName { .. })
    ));
}

/// A bridge on /bin/sh, served in a thread, as `run` does in a process.
struct TestBridge {
    name: String,
    served: JoinHandle<i32>,
    /// Writing a byte is SIGTERM to the bridge.
    stop: OwnedFd,
}

fn unique_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("qmesh-test-pty-bridge-{}-{n}", std::process::id())
}

fn start_test_bridge() -> TestBridge {
    let name = unique_name();
    let listener = listen_abstract(&name).expect("listen");
    let pty = open_terminal().expect("openpty");
    let shell = spawn_shell(Path::new("/bin/sh"), pty.slave).expect("start /bin/sh");
    let (stop_read, stop) = nix::unistd::pipe2(OFlag::O_CLOEXEC).expect("pipe");
    let uid = nix::unistd::getuid().as_raw();
    let served =
        std::thread::spawn(move || serve(pty.master, shell, listener, uid, Some(stop_read)));
    TestBridge { name, served, stop }
}

struct Client {
    stream: UnixStream,
    decoder: Decoder,
    output: String,
}

enum Until<'a> {
    Output(&'a str),
    Exit,
}

impl Client {
    fn connect(name: &str) -> Client {
        let addr = SocketAddr::from_abstract_name(name).expect("address");
        let stream = UnixStream::connect_addr(&addr).expect("connect");
        // Only a guard against a hung test: every wait ends on a frame.
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        Client {
            stream,
            decoder: Decoder::new(),
            output: String::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    fn type_line(&mut self, line: &str) {
        self.send(&frame::encode(frame::DATA, line.as_bytes()));
    }

    /// Reads frames until the output holds `text`, or until EXIT
    /// (whose status is returned).
    fn wait(&mut self, until: Until) -> Option<i32> {
        loop {
            while let Some((kind, payload)) = self.decoder.next().expect("frame") {
                match kind {
                    frame::DATA => self.output.push_str(&String::from_utf8_lossy(&payload)),
                    frame::EXIT => return frame::parse_i32(&payload),
                    other => panic!("unexpected frame kind {other}"),
                }
            }
            if let Until::Output(text) = until {
                if self.output.contains(text) {
                    return None;
                }
            }
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => panic!("the bridge closed without EXIT; output: {:?}", self.output),
                Ok(n) => self.decoder.push(&buf[..n]),
                Err(e) => panic!("reading from the bridge: {e}; output: {:?}", self.output),
            }
        }
    }
}

#[test]
fn the_shell_runs_commands_and_its_exit_status_arrives() {
    let bridge = start_test_bridge();
    let mut client = Client::connect(&bridge.name);
    client.type_line("echo hello-$((6*7))\n");
    client.type_line("exit 3\n");
    let status = client.wait(Until::Exit);
    assert!(
        client.output.contains("hello-42"),
        "output: {:?}",
        client.output
    );
    assert_eq!(status, Some(3));
    assert_eq!(bridge.served.join().ok(), Some(3));
}

#[test]
fn the_window_size_reaches_the_terminal() {
    let bridge = start_test_bridge();
    let mut client = Client::connect(&bridge.name);
    client.send(&frame::window(40, 100));
    client.type_line("stty size\n");
    assert_eq!(client.wait(Until::Output("40 100")), None);
    client.type_line("exit\n");
    assert_eq!(client.wait(Until::Exit), Some(0));
    assert_eq!(bridge.served.join().ok(), Some(0));
}

#[test]
fn the_shell_outlives_a_connection_and_serves_the_next() {
    let bridge = start_test_bridge();
    let mut first = Client::connect(&bridge.name);
    first.type_line("echo first-$((1+1))\n");
    assert_eq!(first.wait(Until::Output("first-2")), None);
    drop(first);
    let mut second = Client::connect(&bridge.name);
    second.type_line("exit 5\n");
    assert_eq!(second.wait(Until::Exit), Some(5));
    assert_eq!(bridge.served.join().ok(), Some(5));
}

#[test]
fn a_stop_request_hangs_the_shell_up() {
    let bridge = start_test_bridge();
    let mut client = Client::connect(&bridge.name);
    client.type_line("echo ready-$((2+2))\n");
    assert_eq!(client.wait(Until::Output("ready-4")), None);
    nix::unistd::write(&bridge.stop, b"T").expect("stop");
    let hup = 128 + Signal::SIGHUP as i32;
    assert_eq!(client.wait(Until::Exit), Some(hup));
    assert_eq!(bridge.served.join().ok(), Some(hup));
}
