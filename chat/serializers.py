from rest_framework import serializers


class SendSerializer(serializers.Serializer):
    to = serializers.IntegerField(min_value=1)
    client_msg_id = serializers.CharField(max_length=64)
    # Size is checked by the service, which names the limit in its error.
    body = serializers.CharField(trim_whitespace=False)


class ReadSerializer(serializers.Serializer):
    upto = serializers.IntegerField(min_value=0)


class BlockSerializer(serializers.Serializer):
    user = serializers.IntegerField(min_value=1)


class EditSerializer(serializers.Serializer):
    body = serializers.CharField(trim_whitespace=False)
