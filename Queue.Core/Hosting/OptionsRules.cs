using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Queue.Core.Hosting;

/// <summary>
/// The rules of one bound options class, each written once: a field, whether it holds, and what it must be. A bad
/// value stops the host at start-up with one failure per bad field, named by its configuration path
/// (<c>Claims:Prefetch must be 0 to 10000</c>).
/// </summary>
public abstract class OptionsRules<T>(string section) : IValidateOptions<T>
    where T : class
{
    public string Section { get; } = section;

    public ValidateOptionsResult Validate(string? name, T options)
    {
        var failures = Rules(options).Where(r => !r.Holds).Select(r => $"{Section}:{r.Field} {r.MustBe}").ToList();
        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }

    /// <summary>Every rule of <paramref name="o"/>: the field, whether it holds, and "must be ..." for the failure.</summary>
    protected abstract IEnumerable<(string Field, bool Holds, string MustBe)> Rules(T o);
}

public static class OptionsRulesRegistration
{
    /// <summary>Binds <typeparamref name="T"/> to its section and checks it with <typeparamref name="TRules"/> when the host starts.</summary>
    public static OptionsBuilder<T> AddCheckedOptions<T, TRules>(this IServiceCollection services)
        where T : class
        where TRules : OptionsRules<T>, new()
    {
        var rules = new TRules();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<T>>(rules));
        return services.AddOptions<T>().BindConfiguration(rules.Section).ValidateOnStart();
    }

    /// <summary>
    /// Binds a section before the container exists (for settings a library must be given while services are being
    /// registered, such as Quartz's), checked by the same rules: a bad value fails here, with the same messages.
    /// </summary>
    public static T BindChecked<T, TRules>(this Microsoft.Extensions.Configuration.IConfiguration configuration)
        where T : class, new()
        where TRules : OptionsRules<T>, new()
    {
        var rules = new TRules();
        var value = new T();
        Microsoft.Extensions.Configuration.ConfigurationBinder.Bind(configuration.GetSection(rules.Section), value);
        var result = rules.Validate(null, value);
        if (result.Failed)
        {
            throw new OptionsValidationException(rules.Section, typeof(T), result.Failures);
        }
        return value;
    }
}
