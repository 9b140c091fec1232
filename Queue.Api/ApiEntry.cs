namespace Queue.Api;

/// <summary>Names this assembly for WebApplicationFactory; both web apps have a top-level Program.</summary>
public sealed class ApiEntry;
