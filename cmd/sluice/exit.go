package main

import (
	"context"
	"errors"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Exit codes, documented in docs/cli.md.
const (
	exitOK          = 0
	exitInternal    = 1
	exitBadConfig   = 2
	exitBadInput    = 3
	exitInterrupted = 130
)

// exitError carries an exit code with an error that was already reported.
type exitError struct {
	code     int
	err      error
	reported bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit"
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// configErr marks an error as the configuration's fault.
func configErr(err error) error { return &exitError{code: exitBadConfig, err: err} }

// reported wraps an error whose message has been printed already.
func reported(code int, err error) error { return &exitError{code: code, err: err, reported: true} }

// exitCode classifies an error.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case plugin.IsBadConfig(err):
		return exitBadConfig
	case plugin.IsBadInput(err):
		return exitBadInput
	}
	return exitInternal
}
