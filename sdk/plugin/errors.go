package plugin

import (
	"errors"
	"fmt"
)

// ConfigError reports a problem with a block's configuration. The core shows
// it at the attribute's line in the pipeline file.
type ConfigError struct {
	// Attribute names the attribute at fault; empty for the whole block.
	Attribute string
	Msg       string
}

func (e *ConfigError) Error() string {
	if e.Attribute == "" {
		return e.Msg
	}
	return fmt.Sprintf("attribute %q: %s", e.Attribute, e.Msg)
}

// BadConfig marks the error as the configuration's fault.
func (e *ConfigError) BadConfig() bool { return true }

// ConfigErrorf returns a *ConfigError for attribute.
func ConfigErrorf(attribute, format string, args ...any) error {
	return &ConfigError{Attribute: attribute, Msg: fmt.Sprintf(format, args...)}
}

// InputError reports input a component cannot use that is not a malformed
// file: a missing file, a tensor of a dtype the component cannot decode.
type InputError struct {
	File   string // the file concerned, if any
	Tensor string // the tensor concerned, if any
	Msg    string
	Err    error
}

func (e *InputError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ": "
	}
	if e.Tensor != "" {
		s += fmt.Sprintf("tensor %q: ", e.Tensor)
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// BadInput marks the error as caused by the input.
func (e *InputError) BadInput() bool { return true }

// IsBadInput reports whether err, or an error it wraps, was caused by the
// input: a malformed or unusable file (it has a BadInput() bool method that
// returns true, as *binio.FormatError and *InputError do).
func IsBadInput(err error) bool {
	var b interface{ BadInput() bool }
	return errors.As(err, &b) && b.BadInput()
}

// IsBadConfig reports whether err was caused by the configuration.
func IsBadConfig(err error) bool {
	var b interface{ BadConfig() bool }
	return errors.As(err, &b) && b.BadConfig()
}
