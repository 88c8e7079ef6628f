// Package pluginv1 holds the generated code of Sluice's plugin protocol,
// version 1 (sluice_plugin_1.0.proto). Plugin authors use sdk/plugin, which
// wraps it; the package is public so plugins in other languages can be
// generated from the same .proto file.
//
// Regenerate with protoc 3.21+, protoc-gen-go and protoc-gen-go-grpc:
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//	  --go-grpc_out=. --go-grpc_opt=paths=source_relative sluice_plugin_1.0.proto
package pluginv1
