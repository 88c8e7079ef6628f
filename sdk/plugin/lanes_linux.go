package plugin

import "syscall"

// recvCloseOnExec makes the descriptors a lane socket receives close on
// exec as they arrive, so that a process the plugin starts never inherits
// one.
const recvCloseOnExec = syscall.MSG_CMSG_CLOEXEC
