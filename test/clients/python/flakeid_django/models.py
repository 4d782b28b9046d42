from django.db import models

from .fields import BigintFlakeidField, FlakeidField


class Event(models.Model):
    id = FlakeidField(primary_key=True)
    body = models.TextField()


class Order(models.Model):
    id = BigintFlakeidField(primary_key=True)
    item = models.TextField()
