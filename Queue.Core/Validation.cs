using System.Text.RegularExpressions;
using Queue.Core.Security;

namespace Queue.Core;

/// <summary>Thrown by Core services for bad input; the web layers turn it into a 400 ProblemDetails naming each field.</summary>
public sealed class ValidationException(IDictionary<string, string[]> errors)
    : Exception("validation failed: " + string.Join("; ", errors.Select(e => $"{e.Key}: {string.Join(", ", e.Value)}")))
{
    public IDictionary<string, string[]> Errors { get; } = errors;
}

public static partial class Validation
{
    [GeneratedRegex("^[a-z0-9-]{1,32}$")]
    public static partial Regex TaskName();

    [GeneratedRegex("^[a-z0-9][a-z0-9-]{0,63}$")]
    public static partial Regex TenantName();

    /// <summary>Checks a task list: 1 to <paramref name="max"/> distinct names matching [a-z0-9-]{1,32}.</summary>
    public static string? Tasks(IReadOnlyList<string>? tasks, int max, bool allowEmpty)
    {
        if (tasks is null || tasks.Count == 0)
        {
            return allowEmpty ? null : "must hold at least one task name";
        }
        if (tasks.Count > max)
        {
            return $"must hold at most {max} task names";
        }
        var bad = tasks.FirstOrDefault(t => t is null || !TaskName().IsMatch(t));
        if (bad is not null || tasks.Contains(null!))
        {
            return $"'{bad}' is not a task name: use 1 to 32 of a-z, 0-9 and '-'";
        }
        if (tasks.Distinct(StringComparer.Ordinal).Count() != tasks.Count)
        {
            return "task names must be distinct";
        }
        return null;
    }

    /// <summary>A new tenant: its name and its settings.</summary>
    public static Dictionary<string, string[]> Tenant(string name, TenantSettings s)
    {
        var errors = new Dictionary<string, string[]>();
        if (!TenantName().IsMatch(name))
        {
            errors["name"] = ["use 1 to 64 of a-z, 0-9 and '-', starting with a letter or digit"];
        }
        foreach (var (field, messages) in TenantSettings(s))
        {
            errors[field] = messages;
        }
        return errors;
    }

    /// <summary>A tenant's settings alone (an update never renames).</summary>
    public static Dictionary<string, string[]> TenantSettings(TenantSettings s)
    {
        var errors = new Dictionary<string, string[]>();
        if (Tasks(s.DefaultTasks, 5, allowEmpty: false) is { } t)
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
