namespace Queue.Admin.Infrastructure;

/// <summary>What the confirmation step shows and re-posts (rendered by Pages/Shared/_Confirm.cshtml).</summary>
public sealed record Confirmation(string Title, string Description, string Handler, string Button, string CancelUrl,
    IReadOnlyList<(string Name, string Value)> Fields);
