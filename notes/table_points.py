"""What the offline vote scripts share (notes/table-vote-session37.py, notes/vote-clusters-session47.py): a measured
table's points per class, each with its kernels' times over the fastest, and a sweep's full timings by problem."""
import gzip
import json
import math

PRECISION = {'bfloat16 ieee': 'bf16', 'float16 ieee': 'fp16', 'float32 tf32': 'tf32', 'float32 ieee': 'fp32',
             'float32 tf32x3': 'tf32x3'}


def between1(lg):
    """Whether log2 of a size lies between octaves (heuristics.cpp's between_octaves)."""
    f = lg - math.floor(lg)
    return 0.2925 < f < 0.7925


def load_classes(table):
    """{class: [point]}: each point's m, n, k, b, their log2s, whether it is between octaves, and `kept`, its
    kernels' times over the fastest's (the fastest 1.0)."""
    names = table['kernels']
    classes = {}
    for cls, points in table['classes'].items():
        classes[cls] = []
        for p in points:
            m, n, k, b = p[:4]
            kept = {names[p[4]]: 1.0, **{names[p[i]]: p[i + 1] / 1000 for i in range(5, len(p), 2)}}
            lm, ln, lk, lb = map(math.log2, (m, n, k, b))
            classes[cls].append(dict(m=m, n=n, k=k, b=b, lm=lm, ln=ln, lk=lk, lb=lb,
                                     between=between1(lm) or between1(ln), kept=kept))
    return classes


def load_sweep(path):
    """{(precision, layout, m, n, k, batch): {kernel: ms}} of a sweep's measurements (jsonl, gzipped)."""
    full = {}
    for line in gzip.open(path, 'rt'):
        r = json.loads(line)
        full[(r['precision'], r['layout'], r['m'], r['n'], r['k'], r['batch'])] = r['ms']
    return full
