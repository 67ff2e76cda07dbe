#!/bin/sh
# Compiles GERBIL's FMeasureCalculator arithmetic and runs it on cases.json (see PROVENANCE.md).
# Usage: make_oracle.sh <gerbil work tree of branch QuestionAnswering @ 794c41a>
# The methods calculateF1QALD, calculateMeasuresQALD and calculateMeasures (lines 142-210) and
# EvaluationCounts (lines 19-45: fields, constructors, add) are copied by line number, unchanged; the
# macro and micro loops (lines 113-123 and 96) are repeated in main() without the logging and the
# contingency-report lines. Doubles are printed with Double.toHexString (exact).
set -eu
G="$1"
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
F="$G/src/main/java/org/aksw/gerbil/evaluate/impl/FMeasureCalculator.java"
E="$G/src/main/java/org/aksw/gerbil/matching/EvaluationCounts.java"
{
  echo 'import java.util.*; import java.nio.file.*;'
  echo 'public class Oracle {'
  sed -n '19,45p' "$E" | sed 's/^public class EvaluationCounts/static class EvaluationCounts/'
  echo '    }'
  sed -n '142,210p' "$F" | sed 's/private double/static double/'
  cat "$HERE/Oracle.main.java"
  echo '}'
} > "$T/Oracle.java"
javac -d "$T" "$T/Oracle.java"
python3 - "$HERE/cases.json" > "$T/cases.tsv" <<'PY'
import json, sys
for suite, qs in json.load(open(sys.argv[1], encoding="utf-8")).items():
    for q in qs:
        print("\t".join([suite, "\x1f".join(q["gold"]), "\x1f".join(q["answer"])]))
PY
java -cp "$T" Oracle "$T/cases.tsv" > "$HERE/oracle.json"
rm -rf "$T"
