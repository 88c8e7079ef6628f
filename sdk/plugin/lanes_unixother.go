//go:build unix && !linux

package plugin

// recvCloseOnExec is 0 where recvmsg cannot mark the descriptors it
// receives close-on-exec; acceptLanes marks them itself.
const recvCloseOnExec = 0
