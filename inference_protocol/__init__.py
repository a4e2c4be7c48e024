"""What the gateway (inference_client) and the GPU workers (inference_worker)
share, and nothing else: the generation request, the model catalog, queue
names, the event log, heartbeat records and the backend interface.

Neither side imports the other; both import this package.
"""
