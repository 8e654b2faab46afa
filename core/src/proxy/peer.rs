//! Who is on the other end of a connection to the proxy. The proxy
//! listens on 127.0.0.1, where every process of the machine's network
//! namespace can connect; it answers only connections the gateway process
//! itself opened: the client end of the TCP connection must be one of
//! this process's own sockets. The kernel says both: `/proc/net/tcp` maps
//! the connection's ports to its client socket's inode, and
//! `/proc/self/fd` lists the sockets this process holds. A sandboxed
//! command (its own network namespace) can't connect at all; a host
//! command connects, and is refused here.

/// Whether the connection from `127.0.0.1:client_port` to the proxy's
/// `127.0.0.1:server_port` was opened by this process. `None` where the
/// platform can't tell (no `/proc`: macOS, Windows, the WebAssembly build).
pub fn own_connection(client_port: u16, server_port: u16) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let tcp = std::fs::read_to_string("/proc/net/tcp").ok()?;
        let Some(inode) = client_inode(&tcp, client_port, server_port) else {
            // No such connection (closed meanwhile, or not on 127.0.0.1 v4).
            return Some(false);
        };
        let want = format!("socket:[{inode}]");
        let fds = std::fs::read_dir("/proc/self/fd").ok()?;
        Some(fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .map(|l| l.as_os_str() == want.as_str())
                .unwrap_or(false)
        }))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (client_port, server_port);
        None
    }
}

/// The inode of the client socket of the established connection
/// `127.0.0.1:client_port` → `127.0.0.1:server_port`, from the text of
/// `/proc/net/tcp` (`sl local_address rem_address st ... uid timeout inode`,
/// addresses as `%08X:%04X` of the kernel's 32-bit value).
pub fn client_inode(tcp: &str, client_port: u16, server_port: u16) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_end_is_found_by_both_ports() {
        let lo = format!("{:08X}", u32::from_ne_bytes([127, 0, 0, 1]));
        let tcp = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: {lo}:4974 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1\n\
             1: {lo}:4974 {lo}:D431 01 00000000:00000000 00:00000000 00000000     0        0 222 1\n\
             2: {lo}:D431 {lo}:4974 01 00000000:00000000 00:00000000 00000000     0        0 333 1\n"
        );
        assert_eq!(client_inode(&tcp, 0xD431, 0x4974), Some(333));
        assert_eq!(client_inode(&tcp, 0xD432, 0x4974), None);
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
