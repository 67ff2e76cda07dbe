"""The reference functions of the seed (i3omar/LLM-Integration-Data, eval_metrics.py, MIT),
copied verbatim from the shared seed document 002_e7c161f96784dff1.txt (README code of i3omar/LLM-Integration-Data, MIT) so that tests compare our
implementation with the seed's own code, never with our own output.

The seed uses the module globals ``model`` (a SentenceTransformer) and ``util``
(``sentence_transformers.util``); tests inject them (the real model, or a fake for pure tests).
"""

from __future__ import annotations

from typing import Any

model: Any = None
util: Any = None


def structural_similarity_score(json_ref, json_gen, beta=0.1):
    keys_ref = set(json_ref.keys())
    keys_gen = set(json_gen.keys())

    # Calculate the intersection and the extra keys in generated JSON
    intersection = keys_ref.intersection(keys_gen)
    extra_keys = keys_gen - keys_ref

    # union calculation
    adjusted_union = len(keys_ref) + beta * len(extra_keys)

    # Compute the StrSS
    return len(intersection) / adjusted_union if adjusted_union > 0 else 1


def semantic_similarity_score(json_ref, json_gen):
    # Extract the sets of keys from both JSON objects
    keys_ref = set(json_ref.keys())
    keys_gen = set(json_gen.keys())

    # Find the common keys in both JSON objects
    matching_keys = keys_ref.intersection(keys_gen)

    # Initialize a list to hold similarity scores for matching keys
    similarities = []

    # Iterate over each matching key to calculate similarity
    for key in matching_keys:
        # Convert the values to strings
        value_ref = str(json_ref[key])
        value_gen = str(json_gen[key])

        # Compute embeddings for the values using a pre-trained model
        emb_ref = model.encode(value_ref, convert_to_tensor=True)
        emb_gen = model.encode(value_gen, convert_to_tensor=True)

        # Calculate cosine similarity between the embeddings
        sim = util.pytorch_cos_sim(emb_ref, emb_gen)

        # Append the similarity score to the list (convert to a scalar value)
        similarities.append(sim.item())

    # Calculate the average similarity score if there are any similarities, else return 0
    return clamp(sum(similarities) / len(similarities) if similarities else 0)


def clamp(score):
    return max(0, min(score, 1))


def overall_json_similarity_score(json_ref, json_gen, alpha=0.5):
    kms = structural_similarity_score(json_ref, json_gen)
    sss = semantic_similarity_score(json_ref, json_gen)
    return alpha * kms + (1 - alpha) * sss
