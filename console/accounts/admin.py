from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from console.access.services import role_grant_request

admin.site.unregister(User)

# What nobody changes on their own account, whatever they may do to others'.
OWN_READONLY = ["groups", "user_permissions", "is_active", "is_staff", "is_superuser"]


@admin.register(User)
class RoleUserAdmin(UserAdmin):
    """Admins manage users and their roles (groups), but only a superuser can grant superuser
    status or permissions outside the roles: otherwise the admin role could promote itself.

    Nobody edits their own roles, permissions or status here. A role that grows the user's
    rights is not given by this form: saving it asks for a role grant, which a second
    administrator confirms (console.access, R19); the signals refuse any other way. A role the
    user may not hold (the application role for a person's account, any other for a service
    account) is refused with the reason."""

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += ["is_superuser", "user_permissions"]
        if obj is not None and obj.pk == request.user.pk:
            fields += [f for f in OWN_READONLY if f not in fields]
        return fields

    def save_related(self, request, form, formsets, change):
        wanted = form.cleaned_data.get("groups")
        if wanted is not None:
            user = form.instance
            held = set(user.groups.values_list("pk", flat=True))
            new = [g for g in wanted if g.pk not in held]
            # Each new role goes the role grants' way: given at once only if it adds nothing.
            given = [role for role in new if self._grant_ask(request, user, role)]
            form.cleaned_data["groups"] = [g for g in wanted if g.pk in held or g in given]
        super().save_related(request, form, formsets, change)

    def _grant_ask(self, request, user, role):
        """Ask for `role` for `user`: True if it was given at once."""
        try:
            grant = role_grant_request(actor=request.user, user=user, role=role)
        except (PermissionDenied, ValidationError) as exc:
            text = exc.messages[0] if isinstance(exc, ValidationError) else str(exc)
            self.message_user(request, f"{role.name}: {text}", messages.WARNING)
            return False
        if grant is None:
            return True
        where = reverse("role-grant-detail", args=[grant.id])
        self.message_user(
            request,
            f"The role {role.name} grows what {user.get_username()} may do: it takes effect "
            f"when a second administrator confirms it ({where}).",
            messages.WARNING,
        )
        return False
