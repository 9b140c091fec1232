using Microsoft.AspNetCore.Mvc.ModelBinding;
using Queue.Core;
using Queue.Core.Security;

namespace Queue.Admin.Pages.Tenants;

/// <summary>The tenant settings form, shared by the create and edit pages.</summary>
public sealed class TenantForm
{
    public string Name { get; set; } = "";

    /// <summary>Task names separated by commas or spaces.</summary>
    public string DefaultTasks { get; set; } = "default";

    public int Weight { get; set; } = 1;

    public int RateLimit { get; set; } = 1000;

    public int RateBurst { get; set; } = 2000;

    public int MaxAttempts { get; set; } = 5;

    public TenantSettings ToSettings() =>
        new(DefaultTasks.Split([',', ' ', ';'], StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries), Weight, RateLimit, RateBurst, MaxAttempts);

    public static TenantForm From(Tenant t) => new()
    {
        Name = t.Name,
        DefaultTasks = string.Join(", ", t.DefaultTaskList),
        Weight = t.Weight,
        RateLimit = t.RateLimit,
        RateBurst = t.RateBurst,
        MaxAttempts = t.MaxAttempts,
    };

    /// <summary>
    /// Checks every field at once, so one answer names everything to fix; fields that did not even parse keep their
    /// parse message. Returns true when the form is good.
    /// </summary>
    public bool Validate(ModelStateDictionary state, bool checkName)
    {
        var errors = checkName ? Queue.Core.Security.TenantValidation.Tenant(Name.Trim(), ToSettings()) : Queue.Core.Security.TenantValidation.Settings(ToSettings());
        foreach (var (field, messages) in errors)
        {
            var key = "Form." + char.ToUpperInvariant(field[0]) + field[1..];
            if (state.GetFieldValidationState(key) != ModelValidationState.Invalid)
            {
                state.AddModelError(key, messages[0]);
            }
        }
        return state.IsValid;
    }

    /// <summary>Core names fields in camelCase ("defaultTasks"); the form's inputs are "Form.DefaultTasks".</summary>
    public static void AddErrors(ModelStateDictionary state, ValidationException ex)
    {
        foreach (var (field, messages) in ex.Errors)
        {
            var key = field.Length == 0 ? "" : "Form." + char.ToUpperInvariant(field[0]) + field[1..];
            foreach (var m in messages)
            {
                state.AddModelError(key, m);
            }
        }
    }
}
