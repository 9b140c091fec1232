using System.Text.RegularExpressions;

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
}
