package gguf

import "testing"

func BenchmarkVocabulary150k(b *testing.B) {
	data := vocabFile(150000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDescribeVocabulary150k(b *testing.B) {
	path := vocabModel(b, 150000)
	b.ReportAllocs()
	for b.Loop() {
		describeOnce(b, path)
	}
}
