// Package standby starts sluice's plugin processes before the host knows
// which plugins it needs, so that their start-up runs beside the host's own.
//
// A built-in plugin process is the sluice binary again (`sluice plugin serve
// NAME`), and most of what it does before it can serve is the same as what
// the host does before it can launch it: exec, the Go runtime, and the
// package initialisers of a few hundred packages, 30-40 ms of CPU on the
// machines Sluice is benchmarked on. Launched when the host has read its
// pipeline, the plugin starts all of that only then, and a run waits for it
// twice in a row: about a tenth of a conversion of a gigabyte.
//
// So the package's init, which runs early (it needs only a few standard
// packages), looks at the command line: a command that runs or plans a
// pipeline (`run`, `plan`, `convert`, without --in-process, --help or
// --skip-unchanged) starts as many processes of the binary, with the argument
// `plugin standby`, as the pipeline has formats among its sources and sinks
// (a look at the pipeline files' lines, not a parse: at most four, one or two
// for convert). Each one initialises and waits on a socket. When the host
// launches a built-in plugin it takes one (Take), and tells it, in one
// message, the command line, the environment and the files it would have
// been exec'd with (Process.Start); the process sets them and carries on as
// `sluice plugin serve NAME` would. The host launches plugins it finds no
// process for, and third-party plugins, as before.
//
// A process no one takes ends when the host closes its end of the socket
// (Release, or the host's exit, whatever the cause), having used its
// start-up's CPU for nothing: the guess of how many to start is made so that
// this is rare. It is not for a pipeline with a third-party format, whose
// type the guess counts but whose plugin is its own binary: the package
// initialises before the table of built-in plugins exists.
//
// SLUICE_STANDBY=off in the environment turns it off. Off Linux nothing is
// started ahead.
package standby
