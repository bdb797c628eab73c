# Reference BM25 (bm25-crate formula, real tokens, no hashing) to cross-check the Rust figures.
import json, math, collections
d = json.load(open(__import__('sys').argv[1] if len(__import__('sys').argv) > 1 else '/tmp/search-docs.json'))
docs = d['docs']; N = len(docs)
toks = [s.split() for _, s in docs]
avgdl = sum(map(len, toks)) / N
k1, b = 1.2, 0.75
post = collections.defaultdict(list)
for i, t in enumerate(toks):
    c = collections.Counter(t); L = len(t)
    for w, tf in c.items():
        post[w].append((i, tf * (k1 + 1) / (tf + k1 * (1 - b + b * L / avgdl))))
for k, qs in sorted(d['queries'].items()):
    h1 = h3 = 0
    for q, want in qs:
        sc = collections.defaultdict(float)
        for w in q.split():
            p = post.get(w, []); df = len(p)
            idf = math.log(1 + (N - df + 0.5) / (df + 0.5))
            for i, v in p: sc[i] += idf * v
        top = sorted(sc.items(), key=lambda x: (-x[1], docs[x[0]][0]))[:5]
        names = [docs[i][0] for i, _ in top]
        h1 += names[:1] == [want]; h3 += want in names[:3]
    print(k, len(qs), 'top1', h1, 'top3', h3)
