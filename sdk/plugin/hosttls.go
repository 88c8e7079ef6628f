package plugin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"
)

// envHostTLS carries the certificates a host issued to a plugin process it
// starts: the plugin's certificate and key, and the host's certificate.
const envHostTLS = "SLUICE_PLUGIN_TLS"

// hostTLS is mutual TLS between a host and a plugin process whose
// certificates the host issues, both of them, before the process starts.
//
// go-plugin's AutoMTLS has each side generate an ECDSA P-521 key and
// certificate; in Go that costs about 15 ms for the first key of a process,
// and the P-521 signatures of the handshake several more: about half the CPU
// a plugin process needs to start (measured in docs/performance.md). P-256,
// which Go implements in assembly, costs microseconds. The plugin's key
// travels in its environment, which only its own user (and root) can read;
// that user could attach a debugger to either process anyway. Only plugins
// served by this SDK read the environment variable, so the host uses it for
// its built-in plugins (the same binary) and AutoMTLS for any other.
type hostTLS struct {
	client *tls.Config // the host's side
	env    string      // NAME=VALUE for the plugin's environment
}

// newHostTLS issues the two certificates.
func newHostTLS() (*hostTLS, error) {
	hostCert, hostKey, err := selfSigned()
	if err != nil {
		return nil, err
	}
	plugCert, plugKey, err := selfSigned()
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(plugKey)
	if err != nil {
		return nil, err
	}
	plugX, err := x509.ParseCertificate(plugCert)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(plugX)
	enc := base64.RawStdEncoding.EncodeToString
	return &hostTLS{
		client: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{hostCert}, PrivateKey: hostKey}},
			RootCAs:      roots,
			ServerName:   "localhost",
			MinVersion:   tls.VersionTLS13,
		},
		env: envHostTLS + "=" + enc(plugCert) + "." + enc(keyDER) + "." + enc(hostCert),
	}, nil
}

// selfSigned makes a P-256 key and a certificate for localhost, usable by
// either end of a connection, valid for a day.
func selfSigned() ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"Sluice"}},
		DNSNames:              []string{"localhost"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return der, key, nil
}

// pluginTLSFromEnv returns the plugin's side of host-issued TLS, or nil when
// the host did not issue certificates (go-plugin's AutoMTLS applies then).
// It removes the variable from the environment.
func pluginTLSFromEnv() (*tls.Config, error) {
	v, ok := os.LookupEnv(envHostTLS)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(envHostTLS)
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("malformed %s", envHostTLS)
	}
	var der [3][]byte
	for i, p := range parts {
		b, err := base64.RawStdEncoding.DecodeString(p)
		if err != nil {
			return nil, fmt.Errorf("malformed %s: %w", envHostTLS, err)
		}
		der[i] = b
	}
	key, err := x509.ParsePKCS8PrivateKey(der[1])
	if err != nil {
		return nil, fmt.Errorf("malformed %s: %w", envHostTLS, err)
	}
	hostCert, err := x509.ParseCertificate(der[2])
	if err != nil {
		return nil, fmt.Errorf("malformed %s: %w", envHostTLS, err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(hostCert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der[0]}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clients,
		MinVersion:   tls.VersionTLS13,
	}, nil
}
