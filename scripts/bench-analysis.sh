#!/usr/bin/env bash
# The failure analyser on the corpus of real failures (internal/ai/analyzer/testdata/real):
# held-out accuracy per label and per framework, the confusion matrix and the precision of the
# answers that are not unknown; the model path on the same runs (a model on the wire that
# echoes the built-in category: the plumbing, not a model's judgement); then the cost of a run
# with 200 failed tests and a 32 MiB log (time and memory per analysis). No service needed.
#
#   scripts/bench-analysis.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== built-in analyser, held-out part (targets: 80% overall, 70% each label, 90% precision)"
go test -count=1 ./internal/ai/analyzer/ -run 'TestRealCorpusIsWellFormed|TestRealCorpusHeldOut' -v |
	grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS' -e '^ok '
echo "== the rules' calibration is the corpus's measure of them"
go test -count=1 ./internal/ai/analyzer/ -run TestCalibrationTable
echo "== model path on the held-out part"
go test -count=1 ./internal/ai/providers/ -run TestModelPathOnTheCorpus -v |
	grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS' -e '^ok '
echo "== 200 failed tests and a 32 MiB log (bounds: 1 s and 50 MB)"
go test -count=1 -run 'XXX' -bench 'BenchmarkAnalyseLarge' -benchtime 5x ./internal/ai/analyzer/ |
	grep -e '^Benchmark'
