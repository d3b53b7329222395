"""A small quixstreams pipeline in exactly-once mode, unmodified library
code: JSON records {"n": i} from INPUT become {"n": i, "double": 2i} in
OUTPUT. Run by tests/compat/test_compat_quixstreams.py.

    pipeline.py BOOTSTRAP INPUT OUTPUT GROUP STATE_DIR DELAY_S IDLE_S
"""

import sys
import time

from quixstreams import Application

bootstrap, inp, out, group, state_dir = sys.argv[1:6]
delay, idle = float(sys.argv[6]), float(sys.argv[7])


def transform(v):
    time.sleep(delay)  # "processing", so a kill lands mid-run
    return {"n": v["n"], "double": v["n"] * 2}


app = Application(broker_address=bootstrap, consumer_group=group, processing_guarantee="exactly-once",
                  auto_offset_reset="earliest", commit_interval=0.2, state_dir=state_dir)
sdf = app.dataframe(topic=app.topic(inp, value_deserializer="json"))
sdf = sdf.apply(transform)
sdf.to_topic(app.topic(out, value_serializer="json"))
# timeout: stop once no record arrived for IDLE_S seconds.
app.run(timeout=idle)
