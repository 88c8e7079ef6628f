//go:build linux

package standby

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/sluice-ml/sluice/internal/pluginenv"
)

func init() {
	if n := wanted(os.Args[1:]); n > 0 {
		if exe, err := os.Executable(); err == nil {
			startAhead(exe, n)
		}
	}
}

// The files of a process started ahead: fds 3 up to controlFD hold
// /dev/null until Await puts the files of the plugin's command there (as
// exec.Cmd.ExtraFiles would have), and controlFD is the socket it waits on.
// Descriptors the process opens meanwhile (the runtime's poller, files its
// initialisers read) get numbers above them.
const (
	firstFD   = 3
	maxFiles  = 7
	controlFD = firstFD + maxFiles
)

// maxMessage bounds the start message: the command line and the
// environment, certificates included, take a few kilobytes.
const maxMessage = 256 << 10

// Process is a sluice process started ahead, waiting to be told which
// command to run. It implements the process handle sdk/plugin's
// LaunchConfig.Start returns.
type Process struct {
	path    string
	process *os.Process
	control *os.File
	stdout  *os.File
	stderr  *os.File

	waitOnce sync.Once
	waitErr  error
}

var (
	mu      sync.Mutex
	waiting []*Process
)

// startAhead starts n processes of the binary at exe; a process that fails
// to start is left out.
func startAhead(exe string, n int) {
	for range n {
		p, err := Spawn(exe)
		if err != nil {
			return
		}
		mu.Lock()
		waiting = append(waiting, p)
		mu.Unlock()
	}
}

// Spawn starts a process of the binary at exe with ChildArgs, its standard
// input this process's, its output and errors to pipes, and the plugin
// environment (internal/pluginenv). Its init, its main and Await then run.
//
// It uses os.StartProcess rather than os/exec, whose initialisation comes
// late in a binary's: the package's own init runs sooner without it.
func Spawn(exe string) (*Process, error) {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &Error{Op: "socketpair", Err: err}
	}
	p := &Process{path: exe, control: os.NewFile(uintptr(pair[0]), "standby control")}
	theirs := os.NewFile(uintptr(pair[1]), "standby control")
	var outW, errW, null *os.File
	defer func() {
		for _, f := range []*os.File{theirs, outW, errW, null} {
			if f != nil {
				f.Close()
			}
		}
	}()
	if p.stdout, outW, err = os.Pipe(); err == nil {
		if p.stderr, errW, err = os.Pipe(); err == nil {
			null, err = os.Open(os.DevNull)
		}
	}
	if err == nil {
		files := []*os.File{os.Stdin, outW, errW}
		for range maxFiles {
			files = append(files, null)
		}
		files = append(files, theirs)
		p.process, err = os.StartProcess(exe, append([]string{exe}, ChildArgs...), &os.ProcAttr{Env: pluginenv.Environ(), Files: files})
	}
	if err != nil {
		p.closeFiles()
		return nil, &Error{Op: "starting " + exe, Err: err}
	}
	return p, nil
}

// closeFiles closes this process's ends of the pipes and the socket.
func (p *Process) closeFiles() {
	for _, f := range []*os.File{p.control, p.stdout, p.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// Take returns a process of the binary at path started ahead and not yet
// taken, or nil.
func Take(path string) *Process {
	mu.Lock()
	defer mu.Unlock()
	for i, p := range waiting {
		if p.path == path {
			waiting = append(waiting[:i], waiting[i+1:]...)
			return p
		}
	}
	return nil
}

// Release ends the processes no one took: each reads the end of its socket
// and exits. It does not wait for them.
func Release() {
	mu.Lock()
	ps := waiting
	waiting = nil
	mu.Unlock()
	for _, p := range ps {
		p.Abandon()
	}
}

// Abandon ends a process that will not be started: it exits once it reads
// the end of its socket, and is reaped in the background.
func (p *Process) Abandon() {
	p.control.Close()
	go p.Wait()
}

// Start tells the process to run args (without the program name) in the
// environment env, with files as its descriptors 3, 4, …, as exec.Cmd's
// Args[1:], Env and ExtraFiles would have; this process keeps its copies
// of the files. A process Start fails for is told nothing: Abandon it. The
// error wraps ErrGone when the process had ended.
func (p *Process) Start(args, env []string, files []*os.File) error {
	defer p.control.Close()
	if len(files) > maxFiles {
		return &Error{Op: "start", Err: errors.New(strconv.Itoa(len(files)) + " files to pass, at most " + strconv.Itoa(maxFiles))}
	}
	body, err := encodeStart(args, env)
	if err != nil {
		return err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			return &Error{Op: "passing " + f.Name(), Err: err}
		}
		if err := rc.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return &Error{Op: "passing " + f.Name(), Err: err}
		}
	}
	var rights []byte
	if len(fds) > 0 {
		rights = syscall.UnixRights(fds...)
	}
	cc, err := p.control.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	if err := cc.Write(func(fd uintptr) bool {
		sendErr = syscall.Sendmsg(int(fd), body, rights, nil, syscall.MSG_NOSIGNAL)
		return true
	}); err != nil {
		sendErr = err
	}
	if sendErr != nil {
		return &Error{Op: "start of pid " + strconv.Itoa(p.Pid()), Err: ErrGone, Cause: sendErr}
	}
	return nil
}

// encodeStart lays out the start message: the number of arguments, the
// arguments and the environment's entries, each ended by a NUL (which
// neither can hold).
func encodeStart(args, env []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(strconv.Itoa(len(args)))
	b.WriteByte(0)
	for _, s := range append(append([]string(nil), args...), env...) {
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			return nil, &Error{Op: "start", Err: errors.New(strconv.Quote(s) + " holds a NUL byte")}
		}
		b.WriteString(s)
		b.WriteByte(0)
	}
	if b.Len() > maxMessage {
		return nil, &Error{Op: "start", Err: errors.New("a start message of " + strconv.Itoa(b.Len()) + " bytes, at most " + strconv.Itoa(maxMessage))}
	}
	return b.Bytes(), nil
}

// decodeStart reads what encodeStart wrote.
func decodeStart(body []byte) (args, env []string, err error) {
	if len(body) == 0 || body[len(body)-1] != 0 {
		return nil, nil, errors.New("start message not ended by a NUL")
	}
	var parts []string
	for _, f := range bytes.Split(body[:len(body)-1], []byte{0}) {
		parts = append(parts, string(f))
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 0 || n > len(parts)-1 {
		return nil, nil, errors.New("bad argument count " + strconv.Quote(parts[0]))
	}
	return parts[1 : 1+n], parts[1+n:], nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.process.Pid }

// Name is the path of the process's binary.
func (p *Process) Name() string { return p.path }

// Stdout is the process's standard output.
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Stderr is the process's standard error.
func (p *Process) Stderr() io.ReadCloser { return p.stderr }

// Wait waits for the process to exit and closes this process's ends of its
// pipes, as exec.Cmd.Wait does: what the process wrote before it exited is
// to be read before. Its error reports an exit other than with status 0.
func (p *Process) Wait() error {
	p.waitOnce.Do(func() {
		state, err := p.process.Wait()
		switch {
		case err != nil:
			p.waitErr = err
		case !state.Success():
			p.waitErr = &Error{Op: "pid " + strconv.Itoa(p.process.Pid), Err: errors.New(state.String())}
		}
		p.closeFiles()
	})
	return p.waitErr
}

// Kill kills the process.
func (p *Process) Kill() error {
	if err := p.process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Await is the waiting side, called by main in a process started with
// ChildArgs once every package is initialised. It waits for the start
// message, puts the files it carries at descriptors 3, 4, …, replaces the
// environment with the one it carries, and returns the arguments to run.
// It returns ErrNotNeeded when the host ends without sending one.
func Await() ([]string, error) {
	buf := make([]byte, maxMessage+1)
	oob := make([]byte, syscall.CmsgSpace(4*maxFiles))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = syscall.Recvmsg(controlFD, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err != syscall.EINTR {
			break
		}
	}
	syscall.Close(controlFD)
	if err != nil {
		return nil, &Error{Op: "reading the start message", Err: err}
	}
	if n == 0 && oobn == 0 {
		return nil, ErrNotNeeded
	}
	if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
		return nil, &Error{Op: "the start message", Err: errors.New("cut short")}
	}
	var fds []int
	if oobn > 0 {
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, &Error{Op: "the start message's files", Err: err}
		}
		for _, m := range msgs {
			got, err := syscall.ParseUnixRights(&m)
			if err != nil {
				return nil, &Error{Op: "the start message's files", Err: err}
			}
			fds = append(fds, got...)
		}
	}
	if len(fds) > maxFiles {
		return nil, &Error{Op: "the start message's files", Err: errors.New(strconv.Itoa(len(fds)) + ", at most " + strconv.Itoa(maxFiles))}
	}
	for i, fd := range fds {
		// Without O_CLOEXEC, as exec leaves ExtraFiles.
		if err := syscall.Dup3(fd, firstFD+i, 0); err != nil {
			return nil, &Error{Op: "placing file " + strconv.Itoa(i), Err: err}
		}
		syscall.Close(fd)
	}
	for fd := firstFD + len(fds); fd < controlFD; fd++ {
		syscall.Close(fd)
	}
	args, env, err := decodeStart(buf[:n])
	if err != nil {
		return nil, &Error{Op: "the start message", Err: err}
	}
	os.Clearenv()
	for _, kv := range env {
		if k, v, ok := cut(kv, '='); ok {
			os.Setenv(k, v)
		}
	}
	return args, nil
}
