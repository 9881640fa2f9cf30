//! One HTTP/1.1 request per connection (`--http`), without sockets: the request
//! ([`HttpRequest`], a plain option type of [`crate::config`], encoded once per target before the
//! run), the response parser ([`ResponseParser`], a pure state machine over the bytes as they
//! arrive, heads parsed with `httparse`), the per-slot exchanges of a worker (`Exchanges`: bytes
//! written and read in, counts and latencies out) and the results ([`HttpReport`]).
//!
//! The engines move the bytes (`crate::engine`): the epoll engine with send(2) (MSG_NOSIGNAL,
//! so a server that reset the connection gives `EPIPE`, not SIGPIPE; counted as the reset it is,
//! `HTTP ECONNRESET`, as on the io_uring engine) and reads until EAGAIN or its read budget, the
//! io_uring engine with IORING_OP_SEND and IORING_OP_RECV.

mod exchange;
mod parser;
mod report;

pub use crate::config::{read_body, HttpRequest, MAX_HTTP_BODY};
pub use crate::failures::ParseError;
pub(crate) use exchange::{Exchanges, Step};
pub use parser::{ResponseParser, MAX_HEAD_BYTES};
pub use report::HttpReport;
