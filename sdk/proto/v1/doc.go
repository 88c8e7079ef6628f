// Package pluginv1 holds the generated code of Sluice's plugin protocol,
// version 1 (package sluice.plugin.v1). Plugin authors use sdk/plugin, which
// wraps it; the package is public so plugins in other languages can be
// generated from the same .proto file.
//
// Every minor of the protocol is a file of its own, frozen once released:
// sluice_plugin_1.0.proto, sluice_plugin_1.1.proto, sluice_plugin_1.2.proto,
// sluice_plugin_1.3.proto, sluice_plugin_1.4.proto, sluice_plugin_1.5.proto,
// sluice_plugin_1.6.proto, sluice_plugin_1.7.proto, sluice_plugin_1.8.proto,
// sluice_plugin_1.9.proto, sluice_plugin_1.10.proto, … A minor adds fields and messages only, so a peer built against an older
// minor ignores what it does not know. The Go code here is generated from the newest file only
// (the files share one protobuf package, so they cannot be compiled
// together); the older files stay as the record of what each release spoke.
// Generate a plugin in another language from the newest file.
//
// Regenerate with protoc 3.21+, protoc-gen-go and protoc-gen-go-grpc:
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//	  --go-grpc_out=. --go-grpc_opt=paths=source_relative sluice_plugin_1.10.proto
package pluginv1
