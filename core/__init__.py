"""The bottom layer: what every app uses and nothing in it imports an app.

errors (the JSON error shape), middleware (request id, 503 for a down service),
redis (the one Redis client factory), env (typed settings readers), bearer
(the one Authorization header parser), canonical (canonical-JSON hashing),
blobstore (the object store: S3 or a local directory).
"""
