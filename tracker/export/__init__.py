"""``gpu-tracker export``: prices and history in formats other tools read. Presentation only:
each writer takes the rows the read path returns (``tracker.reads.data``, ``tracker.analysis``)
and writes one format; nothing here queries the store.

* ``focus``: the FOCUS SKU Price dataset (``focus.py``), with a metadata sidecar naming the
  draft version followed;
* ``opencost``: the OpenCost/Kubecost CSV pricing file (``opencost.py``);
* ``parquet``: prices or price intervals with typed columns (``parquet.py``, pyarrow).
"""
