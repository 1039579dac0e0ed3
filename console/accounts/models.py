# Roles are Django groups (console.accounts.roles); no model of our own.
