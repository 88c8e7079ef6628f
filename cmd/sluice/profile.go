package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile starts the CPU profile --cpuprofile asks for; runMain stops
// it when the command returns.
func (a *app) startProfile() error {
	if a.cpuProfile == "" || a.stopProfile != nil {
		return nil
	}
	f, err := os.Create(a.cpuProfile)
	if err != nil {
		return configErr(fmt.Errorf("--cpuprofile: %w", err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	a.stopProfile = func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: writing %s: %w", a.cpuProfile, err)
		}
		return nil
	}
	return nil
}
