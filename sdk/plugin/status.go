package plugin

import (
	"errors"
	"strconv"
	"strings"
	"syscall"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
)

const (
	reasonBadInput  = "BAD_INPUT"
	reasonBadConfig = "BAD_CONFIG"
	reasonNoSpace   = "NO_SPACE"
)

// toStatus turns a component's error into a gRPC status that keeps its kind:
// bad input, bad configuration (with the attribute), or internal.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !IsBadInput(err) && !IsBadConfig(err) {
		return err
	}
	var ce *ConfigError
	switch {
	case atomicfile.IsNoSpace(err):
		// A full disk or a file size limit, with the output it hit and the
		// bytes it needed when the plugin knows them.
		var ns *atomicfile.NoSpaceError
		errors.As(atomicfile.AsNoSpace(err, 0), &ns)
		md := map[string]string{"path": ns.Path, "needed": strconv.FormatInt(ns.Needed, 10), "errno": "ENOSPC"}
		if errors.Is(err, syscall.EFBIG) {
			md["errno"] = "EFBIG"
		}
		st, _ := status.New(codes.ResourceExhausted, ns.Error()).WithDetails(&errdetails.ErrorInfo{Reason: reasonNoSpace, Metadata: md})
		return st.Err()
	case errors.As(err, &ce):
		st, _ := status.New(codes.FailedPrecondition, ce.Msg).WithDetails(&errdetails.ErrorInfo{
			Reason: reasonBadConfig, Metadata: map[string]string{"attribute": ce.Attribute},
		})
		return st.Err()
	case IsBadConfig(err):
		st, _ := status.New(codes.FailedPrecondition, err.Error()).WithDetails(&errdetails.ErrorInfo{Reason: reasonBadConfig})
		return st.Err()
	case IsBadInput(err):
		st, _ := status.New(codes.InvalidArgument, err.Error()).WithDetails(&errdetails.ErrorInfo{Reason: reasonBadInput})
		return st.Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// RemoteError is an error a plugin process returned.
type RemoteError struct {
	Code codes.Code
	Msg  string
	bad  bool
}

func (e *RemoteError) Error() string { return e.Msg }

// BadInput reports whether the plugin blamed its input.
func (e *RemoteError) BadInput() bool { return e.bad }

// ErrPluginExited is wrapped by errors from a plugin process that stopped
// answering (crashed or was killed).
var ErrPluginExited = errors.New("plugin process exited")

// fromStatus turns a gRPC error back into an error of the right kind.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok {
			continue
		}
		switch info.Reason {
		case reasonBadConfig:
			return &ConfigError{Attribute: info.Metadata["attribute"], Msg: st.Message()}
		case reasonBadInput:
			return &RemoteError{Code: st.Code(), Msg: st.Message(), bad: true}
		case reasonNoSpace:
			needed, _ := strconv.ParseInt(info.Metadata["needed"], 10, 64)
			errno := syscall.ENOSPC
			if info.Metadata["errno"] == "EFBIG" {
				errno = syscall.EFBIG
			}
			return &atomicfile.NoSpaceError{Path: info.Metadata["path"], Needed: needed, Err: errno}
		}
	}
	switch st.Code() {
	case codes.Unavailable:
		return &crashError{msg: st.Message()}
	case codes.Canceled:
		return &RemoteError{Code: st.Code(), Msg: "canceled"}
	}
	if st.Code() == codes.Internal && strings.Contains(st.Message(), "transport is closing") {
		return &crashError{msg: st.Message()}
	}
	return &RemoteError{Code: st.Code(), Msg: st.Message()}
}

type crashError struct{ msg string }

func (e *crashError) Error() string { return "plugin did not respond: " + e.msg }
func (e *crashError) Unwrap() error { return ErrPluginExited }
