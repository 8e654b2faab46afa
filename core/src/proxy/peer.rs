//! Who is on the other end of a connection to the proxy. The proxy
//! listens on 127.0.0.1, where every process of the machine's network
//! namespace can connect; it answers only connections the gateway process
//! itself opened: the client end of the TCP connection must be one of
//! this process's own sockets. The kernel says both: sock_diag gives the
//! connection's client socket's inode, and `/proc/self/fd` lists the
//! sockets this process holds. A sandboxed
//! command (its own network namespace) can't connect at all; a host
//! command connects, and is refused here.

/// Whether the connection from `127.0.0.1:client_port` to the proxy's
/// `127.0.0.1:server_port` was opened by this process. `None` where the
/// platform can't tell (no `/proc` and sock_diag: macOS, Windows, the
/// WebAssembly build).
///
/// Its cost does not grow with the machine's connections: the kernel
/// looks the one client socket up by its four-tuple (an exact
/// `SOCK_DIAG_BY_FAMILY` request, no dump), and this process's own
/// descriptors are searched newest first (OpenClaw opens a connection per
/// request, so the one asking is among the last opened). A process that
/// is not the gateway costs one pass over the gateway's descriptors.
pub fn own_connection(client_port: u16, server_port: u16) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let inode = match client_inode(client_port, server_port) {
            Ok(Some(i)) => i,
            // No such connection (closed meanwhile): not one of ours to answer.
            Ok(None) => return Some(false),
            Err(_) => return None,
        };
        Some(holds_socket(inode))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (client_port, server_port);
        None
    }
}

/// The inode of the client end of the established TCP connection
/// `127.0.0.1:client_port` → `127.0.0.1:server_port` in this network
/// namespace: `None` when there is none. From the kernel's sock_diag
/// (`inet_diag_find_one_icsk`), or, where the kernel offers none (no
/// `inet_diag` module; qemu-user, which runs the arm64 tests), from
/// `/proc/net/tcp`, whose read grows with every socket of the namespace.
#[cfg(target_os = "linux")]
pub fn client_inode(client_port: u16, server_port: u16) -> std::io::Result<Option<u32>> {
    match diag_inode(client_port, server_port) {
        Err(e)
            if e.raw_os_error() == Some(libc::EPROTONOSUPPORT)
                || e.raw_os_error() == Some(libc::EINVAL) =>
        {
            let tcp = std::fs::read_to_string("/proc/net/tcp")?;
            Ok(table_inode(&tcp, client_port, server_port))
        }
        other => other,
    }
}

/// The client socket's inode from the text of `/proc/net/tcp` (`sl
/// local_address rem_address st ... uid timeout inode`, addresses as
/// `%08X:%04X` of the kernel's 32-bit value).
pub fn table_inode(tcp: &str, client_port: u16, server_port: u16) -> Option<u32> {
    let loopback = format!("{:08X}", u32::from_ne_bytes([127, 0, 0, 1]));
    let local = format!("{loopback}:{client_port:04X}");
    let remote = format!("{loopback}:{server_port:04X}");
    tcp.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // 01: ESTABLISHED.
        if f.len() > 9 && f[1] == local && f[2] == remote && f[3] == "01" {
            f[9].parse().ok().filter(|i| *i != 0)
        } else {
            None
        }
    })
}

#[cfg(target_os = "linux")]
fn diag_inode(client_port: u16, server_port: u16) -> std::io::Result<Option<u32>> {
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
    use netlink_packet_sock_diag::constants::{AF_INET, IPPROTO_TCP};
    use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
    use netlink_packet_sock_diag::SockDiagMessage;
    use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr};
    use std::net::{IpAddr, Ipv4Addr};

    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    let mut request = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family: AF_INET,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::ESTABLISHED,
            socket_id: SocketId {
                // The socket's own end first: the client's.
                source_port: client_port,
                destination_port: server_port,
                source_address: loopback,
                destination_address: loopback,
                interface_id: 0,
                // INET_DIAG_NOCOOKIE: any socket of that four-tuple.
                cookie: [0xff; 8],
            },
        })
        .into(),
    );
    request.finalize();
    let mut buf = vec![0; request.buffer_len()];
    request.serialize(&mut buf);
    let socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.connect(&SocketAddr::new(0, 0))?;
    socket.send(&buf, 0)?;
    let mut reply = vec![0; 8192];
    let n = socket.recv(&mut &mut reply[..], 0)?;
    let message = <NetlinkMessage<SockDiagMessage>>::deserialize(&reply[..n])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    match message.payload {
        NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => Ok(Some(r.header.inode)),
        NetlinkPayload::Error(e) if e.code.map(|c| c.get()) == Some(-libc::ENOENT) => Ok(None),
        NetlinkPayload::Error(e) => Err(e.to_io()),
        _ => Ok(None),
    }
}

/// Whether this process holds the socket `inode`, searching its
/// descriptors newest (highest number) first.
#[cfg(target_os = "linux")]
fn holds_socket(inode: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    let mut fds: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable_by(|a, b| b.cmp(a));
    let want = format!("socket:[{inode}]");
    fds.into_iter().any(|fd| {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .map(|l| l.as_os_str() == want.as_str())
            .unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_the_client_end_by_both_ports() {
        let lo = format!("{:08X}", u32::from_ne_bytes([127, 0, 0, 1]));
        let tcp = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: {lo}:4974 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1\n\
             1: {lo}:4974 {lo}:D431 01 00000000:00000000 00:00000000 00000000     0        0 222 1\n\
             2: {lo}:D431 {lo}:4974 01 00000000:00000000 00:00000000 00000000     0        0 333 1\n"
        );
        assert_eq!(table_inode(&tcp, 0xD431, 0x4974), Some(333));
        assert_eq!(table_inode(&tcp, 0xD432, 0x4974), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_that_does_not_exist_is_not_ours() {
        // Nothing listens on port 1 of this namespace's loopback.
        assert_eq!(client_inode(40_000, 1).unwrap(), None);
        assert_eq!(own_connection(40_000, 1), Some(false));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_this_process_opened_is_its_own_and_another_process_is_not() {
        use std::net::{TcpListener, TcpStream};
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let mine = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_accepted, from) = server.accept().unwrap();
        assert_eq!(from.port(), mine.local_addr().unwrap().port());
        assert_eq!(own_connection(from.port(), port), Some(true));
        // Another process's connection: bash opens one with /dev/tcp.
        let mut child = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 5"))
            .spawn()
            .expect("bash");
        let (_theirs, from) = server.accept().unwrap();
        assert_eq!(own_connection(from.port(), port), Some(false));
        let _ = child.kill();
        let _ = child.wait();
    }
}
