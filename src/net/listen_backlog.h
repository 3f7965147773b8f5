#pragma once

namespace ootci {

// Debian's cpp-httplib 0.11 is compiled with a listen backlog of 5, so a burst of connections
// (a webhook storm, a 10-repo fan-out) overflows it and clients wait a 1 s SYN retransmit. Linux
// lets listen() be called again on a listening socket to raise the backlog; this finds the
// socket listening on `port` and does that. Returns false if no such socket was found.
bool raise_listen_backlog(int port, int backlog = 4096);

}  // namespace ootci
