namespace Queue.Core.Security;

/// <summary>The field rules of a tenant (docs/CONTRACT.md has none: tenants are made in the Admin and the CLI).</summary>
public static class TenantValidation
{
    /// <summary>A new tenant: its name and its settings.</summary>
    public static Dictionary<string, string[]> Tenant(string name, TenantSettings s)
    {
        var errors = new Dictionary<string, string[]>();
        if (!Validation.TenantName().IsMatch(name))
        {
            errors["name"] = ["use 1 to 64 of a-z, 0-9 and '-', starting with a letter or digit"];
        }
        foreach (var (field, messages) in Settings(s))
        {
            errors[field] = messages;
        }
        return errors;
    }

    /// <summary>A tenant's settings alone (an update never renames).</summary>
    public static Dictionary<string, string[]> Settings(TenantSettings s)
    {
        var errors = new Dictionary<string, string[]>();
        if (Validation.Tasks(s.DefaultTasks, 5, allowEmpty: false) is { } t)
        {
            errors["defaultTasks"] = [t];
        }
        if (s.Weight is < 1 or > 1000)
        {
            errors["weight"] = ["must be 1 to 1000"];
        }
        if (s.RateLimit is < 0 or > 1_000_000)
        {
            errors["rateLimit"] = ["must be 0 (no limit) to 1000000 requests per second"];
        }
        if (s.RateBurst is < 0 or > 10_000_000)
        {
            errors["rateBurst"] = ["must be 0 to 10000000"];
        }
        if (s.MaxAttempts is < 1 or > 100)
        {
            errors["maxAttempts"] = ["must be 1 to 100"];
        }
        return errors;
    }
}
