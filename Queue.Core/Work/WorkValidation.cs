namespace Queue.Core.Work;

/// <summary>The field rules of the worker endpoints (docs/CONTRACT.md "Worker endpoints"); each returns every bad field.</summary>
public static class WorkValidation
{
    public const int MaxTasks = 20;

    public static Dictionary<string, string[]> Next(string? worker, IReadOnlyList<string>? tasks, int? max, int? wait, int? lease)
    {
        var errors = new Dictionary<string, string[]>();
        if (max is < 1 or > 100)
        {
            errors["max"] = ["must be 1 to 100"];
        }
        if (wait is < 0 or > 30)
        {
            errors["wait"] = ["must be 0 to 30 seconds"];
        }
        Lease(lease, errors);
        if (worker is { Length: > 200 })
        {
            errors["worker"] = ["must be at most 200 characters"];
        }
        if (tasks is { Count: > MaxTasks })
        {
            errors["tasks"] = [$"must hold at most {MaxTasks} task names"];
        }
        // A worker may name a task twice; it is served once (unlike a job's task list, where a repeat is a mistake).
        else if (Validation.Tasks(tasks?.Distinct(StringComparer.Ordinal).ToList(), MaxTasks, allowEmpty: true) is { } t)
        {
            errors["tasks"] = [t];
        }
        return errors;
    }

    public static Dictionary<string, string[]> Fail(string? leaseToken, string? error)
    {
        var errors = LeaseToken(leaseToken);
        if (error is { Length: > 4000 })
        {
            errors["error"] = ["must be at most 4000 characters"];
        }
        return errors;
    }

    public static Dictionary<string, string[]> Extend(string? leaseToken, int? lease)
    {
        var errors = LeaseToken(leaseToken);
        Lease(lease, errors);
        return errors;
    }

    public static Dictionary<string, string[]> LeaseToken(string? leaseToken) =>
        leaseToken is null ? new() { ["leaseToken"] = ["is required"] } : [];

    private static void Lease(int? lease, Dictionary<string, string[]> errors)
    {
        if (lease is < 10 or > 3600)
        {
            errors["lease"] = ["must be 10 to 3600 seconds"];
        }
    }
}
