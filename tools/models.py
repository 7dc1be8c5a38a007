"""ORM mirror of registered tools: staff tune them here, code stays the source of truth."""
from django.db import models


class Tool(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True, help_text="The description in code.")
    description_override = models.TextField(blank=True, help_text="Shown to the model instead, when set.")
    enabled = models.BooleanField(default=True)
    requires_approval = models.BooleanField(default=False)
    is_global = models.BooleanField(default=False)
    module = models.CharField(max_length=200, blank=True)
    registered = models.BooleanField(default=True, help_text="False when the code no longer defines it.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
