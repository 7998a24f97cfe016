//! Standard input for a person's answers at the terminal, which a cancelled run stops
//! waiting on: Ctrl-C, a cancel, or a wait past `max_wait_ms` ends the prompt at once
//! instead of when Enter is next pressed. Input is polled in short slices and read from
//! the descriptor directly (no buffer of std's in between that a poll could not see).

use std::io::{self, Read};
use std::os::fd::AsFd;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use toolhost_engine::Cancel;

/// How long one poll waits before looking at the cancel flag again.
const SLICE: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 100_000_000,
};

/// Reads standard input until `cancel` is cancelled, then reads as its end: every prompt
/// takes the end of input as "no" (or no answer).
pub(crate) struct Interruptible {
    pub cancel: Cancel,
}

impl Read for Interruptible {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let stdin = io::stdin();
        let fd = stdin.as_fd();
        loop {
            if self.cancel.is_cancelled() {
                return Ok(0);
            }
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, Some(&SLICE)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => return rustix::io::read(fd, buf).map_err(io::Error::from),
                Err(e) => return Err(io::Error::from(e)),
            }
        }
    }
}
