//! Unit tests of `standard.rs`.

use super::*;

#[test]
fn a_pipe_is_a_fifo_and_a_socket_pair_is_a_socket() {
    let (r, _w) = std::io::pipe().unwrap();
    assert_eq!(inspect(&r).unwrap().1, Kind::Fifo);
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    assert_eq!(inspect(&a).unwrap().1, Kind::Socket);
    let file = tempfile::tempfile().unwrap();
    assert_eq!(inspect(&file).unwrap().1, Kind::Other);
}

#[test]
fn two_ends_of_one_pipe_share_an_identity_and_two_pipes_do_not() {
    let (r1, w1) = std::io::pipe().unwrap();
    let (r2, _w2) = std::io::pipe().unwrap();
    assert_eq!(inspect(&r1).unwrap().2, inspect(&w1).unwrap().2);
    assert_ne!(inspect(&r1).unwrap().2, inspect(&r2).unwrap().2);
}
