from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User

admin.site.unregister(User)


@admin.register(User)
class RoleUserAdmin(UserAdmin):
    """Admins manage users and their roles (groups), but only a superuser can grant superuser
    status or permissions outside the roles: otherwise the admin role could promote itself."""

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += ["is_superuser", "user_permissions"]
        return fields
