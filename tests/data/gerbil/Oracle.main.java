    static String h(double d) { return "\"" + Double.toHexString(d) + "\""; }

    public static void main(String[] args) throws Exception {
        LinkedHashMap<String, List<EvaluationCounts>> suites = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            String[] parts = line.split("\t", -1);
            Set<String> gold = new HashSet<>(), answer = new HashSet<>();
            for (String s : parts[1].split("\u001f")) if (!s.isEmpty()) gold.add(s);
            for (String s : parts[2].split("\u001f")) if (!s.isEmpty()) answer.add(s);
            // QAMatchingsCounter.countMatchings(Set, Set): tp = |A n G|, fp = |A| - tp, fn = |G| - tp
            Set<String> inter = new HashSet<>(answer);
            inter.retainAll(gold);
            int tp = inter.size();
            suites.computeIfAbsent(parts[0], k -> new ArrayList<>())
                  .add(new EvaluationCounts(tp, answer.size() - tp, gold.size() - tp));
        }
        StringBuilder out = new StringBuilder("{\n");
        int s = 0;
        for (Map.Entry<String, List<EvaluationCounts>> e : suites.entrySet()) {
            EvaluationCounts[] counts = e.getValue().toArray(new EvaluationCounts[0]);
            out.append(" \"").append(e.getKey()).append("\": {\"questions\": [");
            for (int i = 0; i < counts.length; ++i) {
                double[] q = calculateMeasuresQALD(counts[i]);
                double[] m = calculateMeasures(counts[i]);
                out.append(i == 0 ? "\n" : ",\n").append("   {\"tp\": ").append(counts[i].truePositives)
                   .append(", \"fp\": ").append(counts[i].falsePositives)
                   .append(", \"fn\": ").append(counts[i].falseNegatives)
                   .append(", \"qald\": [").append(h(q[0])).append(", ").append(h(q[1])).append(", ").append(h(q[2]))
                   .append("], \"plain\": [").append(h(m[0])).append(", ").append(h(m[1])).append(", ").append(h(m[2])).append("]}");
            }
            // calculateMacroFMeasure, lines 113-123
            double avgs[] = new double[3];
            double measures[];
            for (int i = 0; i < counts.length; ++i) {
                measures = calculateMeasures(counts[i]);
                avgs[0] += measures[0];
                avgs[1] += measures[1];
                avgs[2] += measures[2];
            }
            avgs[0] /= counts.length;
            avgs[1] /= counts.length;
            avgs[2] /= counts.length;
            double F1_scoreDef = calculateF1QALD(counts);
            // calculateMicroFMeasure, lines 96-97
            EvaluationCounts sums = new EvaluationCounts().add(counts);
            double micro[] = calculateMeasures(sums);
            out.append("],\n  \"Macro Precision\": ").append(h(avgs[0]))
               .append(", \"Macro Recall\": ").append(h(avgs[1]))
               .append(", \"Macro F1 score\": ").append(h(avgs[2]))
               .append(", \"Macro F1 QALD\": ").append(h(F1_scoreDef))
               .append(",\n  \"Micro Precision\": ").append(h(micro[0]))
               .append(", \"Micro Recall\": ").append(h(micro[1]))
               .append(", \"Micro F1 score\": ").append(h(micro[2])).append("}")
               .append(++s < suites.size() ? ",\n" : "\n");
        }
        out.append("}\n");
        System.out.print(out);
    }
